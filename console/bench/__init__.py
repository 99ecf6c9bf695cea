"""The evaluation and benchmark harness behind `manage.py bench` (issue 6).

Modules: `metrics` (R@k, nDCG@10, MRR), `isolate` (a throwaway data directory
in a child process), `loading` (datasets through the normal import path),
`quality` and `peers` (retrieval quality, ours beside LanceDB hybrid and
SQLite FTS5), `corpus` and `speed` (synthetic corpus, latency, ingest,
memory), `smoke` (both on a tiny corpus), `report` (tables and JSON).
"""
