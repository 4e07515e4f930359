"""What a `.json` file named on the command line holds: a report saved by `irscope scan --json`,
a kernel's metadata as Triton writes it, or neither.

A named file is untrusted input. Anything else (`{}`, a diff report, a baseline) used to be taken
for a kernel with empty metadata, so `diff base.json x.json --fail-on regression` passed its gate
(issue 22 item 17); it is now an error naming the file. Metadata found inside a cache directory is
harvested as before: only a file the user names is checked here.
"""

from __future__ import annotations

import json
import os

from irscope.model.errors import ArtifactError
from irscope.model.limits import read_limited
from irscope.model.report import SCHEMA as SCAN_REPORT_SCHEMA

# The keys every Triton 3.0-3.9 metadata json has (parsers/metadata.py reads the rest).
ALWAYS_KEYS = ("name", "hash", "target", "num_warps", "num_stages", "num_ctas", "shared")

REPORT = "report"
METADATA = "metadata"
OTHER = "other"



def json_kind(path: str | os.PathLike) -> tuple[str, str]:
    """(REPORT, ""), (METADATA, "") or (OTHER, what the file holds instead).

    A file that cannot be read here (missing, no regular file, too large, unreadable) counts as
    METADATA: the harvest reports that problem itself, as for any artifact.
    """
    if not os.path.isfile(path):
        return METADATA, ""
    try:
        data = json.loads(read_limited(os.fspath(path)))
    except (OSError, ArtifactError):
        return METADATA, ""
    except UnicodeDecodeError:
        return OTHER, "not UTF-8 text"
    except json.JSONDecodeError as exc:
        return OTHER, f"not valid JSON (line {exc.lineno}: {exc.msg})"
    except RecursionError:  # json's decoder recurses once per `[` or `{`
        return OTHER, "JSON nested too deep to read"
    except ValueError as exc:  # an integer of more than 4,300 digits
        return OTHER, f"not JSON irscope reads ({exc})"
    if not isinstance(data, dict):
        return OTHER, f"a JSON {_json_type(data)}, not an object"
    schema = data.get("schema")
    if schema == SCAN_REPORT_SCHEMA:
        return REPORT, ""
    if schema is not None:
        return OTHER, f"a file of schema {str(schema)[:60]!r}, not a scan report ({SCAN_REPORT_SCHEMA!r})"
    # One key every Triton version writes is enough: a damaged metadata file is still harvested, with warnings.
    if not any(key in data for key in ALWAYS_KEYS):
        return OTHER, "a JSON object with none of the keys Triton's metadata has (name, hash, target, num_warps...)"
    return METADATA, ""


def not_an_input(path: str | os.PathLike, what: str) -> str:
    """The one-line error for a named `.json` that is neither a scan report nor Triton metadata."""
    return (f"{os.fspath(path)}: {what}: neither a report saved by `irscope scan --json` "
            "nor a Triton kernel's metadata")


def _json_type(value: object) -> str:
    return {list: "array", str: "string", bool: "boolean", type(None): "null"}.get(type(value), "number")
