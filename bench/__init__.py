"""powercontext benchmarks (run with ``python -m bench <name>``; see ``bench/__main__.py``).

Not part of the installed package: the benchmarks drive the real library from a source
checkout and write their results under ``bench/results/`` (git-ignored).
"""
