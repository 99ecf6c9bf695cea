"""The Django console and API over the recall engine (`recall/`).

numpy's OpenBLAS runs a thread per core and keeps them spinning for a while
after each product. The in-process vector copy answers a small project's
search with one matrix-vector product, so in a serving process those threads
held a core busy between requests: on 2 cores the query embedding, which
runs on a thread beside the full-text search (recall/gather.py), waited for
it, and Recall at 100,000 memories took 16.6 ms p50 instead of 13.5. One
BLAS thread is set here, before numpy loads (this package is imported first
by manage.py, the WSGI/ASGI entry points and pytest-django); an operator's
own OPENBLAS_NUM_THREADS is kept.
"""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
