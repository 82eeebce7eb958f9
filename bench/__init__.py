"""Benchmarks (`make bench`): results go to bench/results/*.json."""
