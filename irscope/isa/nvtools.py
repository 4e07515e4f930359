"""Finding and running NVIDIA's disassemblers (nvdisasm, cuobjdump) to get SASS from a cubin.

Triton's Linux wheel ships both in `triton/backends/nvidia/bin/`, so wherever Triton is
installed the SASS is one subprocess away. The search order:
1. the environment variable Triton itself honours (`TRITON_NVDISASM_PATH`,
   `TRITON_CUOBJDUMP_PATH`);
2. the installed triton package, found with importlib's `find_spec`, which locates the
   package without executing it: irscope never imports triton;
3. `PATH`;
4. `$CUDA_HOME/bin`.
Nothing runs at import. A cubin that cannot be disassembled gives a warning Problem that
says how to get the tool, and the rest of the analysis goes on without SASS.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import NamedTuple

from irscope.isa.model import IsaProgram
from irscope.model.kernel import Fact, Problem
from irscope.parsers.cubin import parse_cubin
from irscope.model.errors import ArtifactError
from irscope.parsers.sass import parse_sass

TOOL_ENV = {"nvdisasm": "TRITON_NVDISASM_PATH", "cuobjdump": "TRITON_CUOBJDUMP_PATH"}
DEFAULT_TIMEOUT = 60.0
_FIX = ("install triton (its wheel ships nvdisasm and cuobjdump in triton/backends/nvidia/bin), "
        "set TRITON_NVDISASM_PATH to an nvdisasm binary, or put CUDA's bin directory on PATH")


class FoundTool(NamedTuple):
    path: str
    rule: str  # "env:TRITON_NVDISASM_PATH", "triton package", "PATH", "CUDA_HOME"


def find_tool(name: str) -> FoundTool | None:
    """Where `nvdisasm` or `cuobjdump` is, and which rule found it; None when no rule does."""
    found, _ = _search(name)
    return found


def _search(name: str) -> tuple[FoundTool | None, list[str]]:
    """The first hit, plus every place looked at (for the Problem message)."""
    tried: list[str] = []
    env = TOOL_ENV.get(name)
    if env:
        value = os.environ.get(env)
        if value:
            if _executable(value):
                return FoundTool(value, f"env:{env}"), tried
            tried.append(f"${env}={value} (not an executable file)")
        else:
            tried.append(f"${env} (unset)")
    bin_dir = triton_bin_dir()
    if bin_dir is not None:
        candidate = os.path.join(bin_dir, name)
        if _executable(candidate):
            return FoundTool(candidate, "triton package"), tried
        tried.append(candidate)
    else:
        tried.append("the triton package (not installed)")
    on_path = shutil.which(name)
    if on_path:
        return FoundTool(on_path, "PATH"), tried
    tried.append("PATH")
    cuda_home = os.environ.get("CUDA_HOME")
    if cuda_home:
        candidate = os.path.join(cuda_home, "bin", name)
        if _executable(candidate):
            return FoundTool(candidate, "CUDA_HOME"), tried
        tried.append(candidate)
    else:
        tried.append("$CUDA_HOME (unset)")
    return None, tried


def triton_bin_dir() -> str | None:
    """`<site-packages>/triton/backends/nvidia/bin` of the installed triton, without importing it."""
    try:
        spec = importlib.util.find_spec("triton")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        candidate = os.path.join(location, "backends", "nvidia", "bin")
        if os.path.isdir(candidate):
            return candidate
    return None


def _executable(path: str) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)


def disassemble(cubin_path: str, timeout: float = DEFAULT_TIMEOUT,
                data: bytes | None = None) -> tuple[str | None, Problem | None]:
    """`nvdisasm -g -c` of a cubin (source lines included); `cuobjdump -sass` if nvdisasm fails.

    Returns (text, None) on success, (text, warning) when only cuobjdump worked (no source
    lines), and (None, warning) when neither could. Runs in a temporary directory and reads
    stdout only, so nothing is ever written next to the cubin. `data`: the cubin's bytes, already
    read through irscope/model/artifact_reader.py; the tools then read a private copy of them, never
    what `cubin_path` names by then (a link or FIFO swapped in).
    """
    if data is not None:
        with tempfile.TemporaryDirectory(prefix="irscope-cubin-") as private:
            copy = os.path.join(private, "kernel.cubin")
            with open(copy, "wb") as f:
                f.write(data)
            text, problem = disassemble(copy, timeout)
        return text, None if problem is None else replace(problem, path=cubin_path)
    path = str(Path(cubin_path).resolve())
    if not os.path.isfile(path):
        return None, Problem(cubin_path, "cannot disassemble: the cubin does not exist", severity="warning")
    nvdisasm, tried_nvdisasm = _search("nvdisasm")
    failures: list[str] = []
    if nvdisasm is not None:
        text, error = _run([nvdisasm.path, "-g", "-c", path], timeout)
        if text is not None:
            return text, None
        failures.append(f"{nvdisasm.path} -g -c ({nvdisasm.rule}) failed: {error}")
    cuobjdump, tried_cuobjdump = _search("cuobjdump")
    if cuobjdump is not None:
        text, error = _run([cuobjdump.path, "-sass", path], timeout)
        if text is not None:
            why = failures[0] if failures else "nvdisasm not found"
            return text, Problem(cubin_path, f"SASS read with cuobjdump -sass, without source lines ({why}); "
                                             f"for source lines {_FIX}", severity="warning")
        failures.append(f"{cuobjdump.path} -sass ({cuobjdump.rule}) failed: {error}")
    if not failures:
        looked = "; ".join(dict.fromkeys(tried_nvdisasm + tried_cuobjdump))
        return None, Problem(cubin_path, f"no SASS: nvdisasm and cuobjdump not found (looked at: {looked}); "
                                         f"to fix, {_FIX}", severity="warning")
    return None, Problem(cubin_path, f"no SASS: {'; '.join(failures)}. A tool older than the cubin's "
                                     f"architecture fails this way; to fix, {_FIX}", severity="warning")


def _run(argv: list[str], timeout: float) -> tuple[str | None, str | None]:
    """stdout of a disassembler when it exits 0 and printed instructions, else (None, why)."""
    with tempfile.TemporaryDirectory(prefix="irscope-nvtools-") as cwd:
        try:
            done = subprocess.run(argv, cwd=cwd, capture_output=True, timeout=timeout, check=False)
        except subprocess.TimeoutExpired:
            return None, f"timed out after {timeout:g} s"
        except OSError as exc:
            return None, str(exc)
    out = done.stdout.decode("utf-8", errors="replace")
    if done.returncode != 0:
        err = done.stderr.decode("utf-8", errors="replace").strip().splitlines()
        return None, f"exit status {done.returncode}" + (f": {err[-1]}" if err else "")
    if "/*0000*/" not in out:
        return None, "printed no instructions"
    return out, None


def load_sass(cubin_path: str, timeout: float = DEFAULT_TIMEOUT,
              data: bytes | None = None) -> tuple[IsaProgram | None, Problem | None]:
    """The cubin's SASS as an IsaProgram (path = the cubin; lines = lines of the disassembly).

    Adds the cubin's own resource figures (`registers`, `stack_bytes`, ... from
    irscope.parsers.cubin) to the program's facts where the ELF has them. `data`: the cubin's
    bytes as irscope/model/artifact_reader.py read them (else the path is read here).
    """
    text, problem = disassemble(cubin_path, timeout, data)
    if text is None:
        return None, problem
    try:
        program = parse_sass(text, cubin_path)
    except ArtifactError as exc:
        return None, Problem(cubin_path, f"disassembly unreadable: {exc.message}", exc.line, "warning")
    facts: dict[str, Fact] = dict(program.facts)
    function = program.function()
    if function is not None:
        try:
            if data is None:
                data = Path(cubin_path).read_bytes()
            for key, fact in parse_cubin(data, cubin_path, function.name).items():
                facts.setdefault(key, fact)
        except (OSError, ArtifactError):
            pass  # the SASS is still good; the resource figures come from irscope.isa.resources anyway
    program = IsaProgram(program.isa, program.path, program.target, program.functions, program.files, facts,
                         program.unparsed)
    return program, problem
