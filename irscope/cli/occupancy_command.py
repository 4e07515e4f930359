"""`irscope occupancy`: the occupancy of harvested kernels, or of numbers given for an architecture (what-if)."""

from __future__ import annotations

import argparse

from irscope.render.closed_stdout import write_stdout
from irscope.cli.common import error, refused_paths, stdout_console
from irscope.cli.exit_codes import EXIT_OK, EXIT_PARTIAL, EXIT_USAGE


def cmd_occupancy(args: argparse.Namespace) -> int:
    import json

    from irscope.render.occupancy import occupancy_table
    from irscope.model.serde import to_data

    what_if = _what_if(args)
    if refused_paths(args.paths):
        error(refused_paths(args.paths))
        return EXIT_USAGE
    found = _of_kernels(args, what_if) if args.paths else _of_numbers(args, what_if)
    if isinstance(found, str):  # refused: nothing is shown
        error(found)
        return EXIT_USAGE
    results, lost = found
    if args.json:
        rows = [{"kernel": k.name if k else None, "key": k.key if k else None, **to_data(o)} for _, k, o in results]
        write_stdout(json.dumps(rows, indent=1) + "\n")
    else:
        out = stdout_console()
        for title, _, occ in results:
            out.print(occupancy_table(title, occ, None if args.wide else out.width))
            out.print()
    return EXIT_USAGE if not results else (EXIT_PARTIAL if lost else EXIT_OK)


def _of_numbers(args: argparse.Namespace, what_if: dict[str, int]):
    """The what-if without PATH: ([(title, None, occupancy)], False), or why it is refused."""
    from irscope.occupancy import what_if as numbers
    from irscope.occupancy.calculator import occupancy_for

    if not args.arch:
        return "give a PATH to harvested kernels, or --arch and the numbers for a what-if"
    problem = numbers.refused(args.arch, numbers.given(args)) or numbers.missing(args.arch, numbers.given(args))
    if problem:
        return problem
    values = dict(what_if)
    values.setdefault("lds", 0)
    values.setdefault("shared", values["lds"])
    try:
        return [(f"what-if on {args.arch}", None, occupancy_for(args.arch, _for_vendor(args.arch, values)))], False
    except ValueError as exc:
        return str(exc)


def _of_kernels(args: argparse.Namespace, what_if: dict[str, int]):
    """The kernels under PATH (those --kernel matches), with the numbers given in place of their own:
    ([(title, kernel, occupancy)], whether one could not be analyzed in full), or why it is refused.
    A kernel whose occupancy is unknown is said on stderr and left out."""
    import fnmatch

    from irscope.occupancy import what_if as numbers
    from irscope.occupancy.calculator import kernel_occupancy
    from irscope.pipeline.analyze import scan
    from irscope.pipeline.harvester import HarvestError
    from irscope.model.safe_text import shorten

    try:
        report = scan(args.paths)
    except HarvestError as exc:
        return str(exc)
    chosen = [r for r in report.kernels if not args.kernel
              or fnmatch.fnmatch(r.kernel.name, args.kernel) or fnmatch.fnmatch(r.kernel.key, args.kernel)]
    if not chosen:
        return f"no kernel{' matching ' + args.kernel if args.kernel else ''} under {', '.join(report.roots)}"
    lost = any(p.severity == "error" for r in chosen for p in r.problems) or \
        any(p.severity == "error" for p in report.problems)
    results = []
    for r in chosen:
        # --arch with PATH: the kernel's own numbers placed on ARCH, or refused (irscope/occupancy/what_if.py)
        moved = numbers.retarget(r.kernel, r.resources, args.arch) if args.arch else (r.kernel, r.resources)
        if isinstance(moved, str):
            return moved
        kernel, resources = moved
        title = f"{shorten(r.kernel.name)}  {shorten(str(kernel.target or '?'))}  {shorten(r.kernel.key)}"
        arch = kernel.target.arch if kernel.target else ""
        problem = numbers.beyond_hardware(arch, numbers.given(args))
        if problem:
            return f"{problem} ({r.kernel.key})"
        occ, problems = kernel_occupancy(kernel, resources, _for_vendor(arch, what_if)) \
            if what_if or kernel is not r.kernel else (r.occupancy, [])
        if occ is not None and r.kernel.target:
            occ = numbers.retarget_note(occ, r.kernel.target.arch, arch)
        if occ is None:
            reasons = problems or [p for p in r.problems if p.message.startswith("occupancy")]
            error(f"{r.kernel.key}: " + ("; ".join(p.message for p in reasons) or "occupancy unknown"))
            lost = True
            continue
        results.append((title, r.kernel, occ))
    return results, lost


def _what_if(args: argparse.Namespace) -> dict[str, int]:
    given = {name: getattr(args, name) for name in ("vgprs", "sgprs", "warps", "registers", "static_shared",
                                                   "barriers") if getattr(args, name) is not None}
    lds = args.lds if args.lds is not None else args.shared
    if lds is not None:
        given["lds"] = given["shared"] = lds  # one flag for both vendors' name of the same thing
    return given


def _for_vendor(arch: str, values: dict[str, int]) -> dict[str, int]:
    """Drop the other vendor's names so a what-if reads `--lds` on AMD and `--shared` on NVIDIA."""
    amd = arch.startswith("gfx")
    other = {"registers", "shared", "static_shared", "barriers"} if amd else {"vgprs", "sgprs", "lds"}
    return {k: v for k, v in values.items() if k not in other}

