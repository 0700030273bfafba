# Chaos suite and benchmarks (owned by test/; included from the top Makefile).
