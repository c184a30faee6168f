"""oramem benchmarks: the same synthetic corpus through oramem and its peers, measured in
one run and reported as ratios. Not part of the installed package; run from the repository
root with ``python -m bench run`` (see bench/README.md)."""
