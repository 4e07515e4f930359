"""Parsers of Triton's compiler artifacts (installed as `irscope.parsers`).

Each parser takes the bytes or text of one artifact and returns model values whose
numbers carry the line they came from. A parser never fails a whole file for one bad
line; what it cannot read it raises as `ArtifactError`, naming file and line.
"""
