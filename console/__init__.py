"""The Django console and API over the recall engine (`recall/`).

numpy's OpenBLAS runs a thread per core and, by default, keeps them spinning
for about a tenth of a second after each product. The in-process vector copy
answers a search with matrix-vector products, so in a serving process those
threads held both cores between requests: a process doing Recalls back to back
used two cores' time for one core's work, and the query embedding, which runs
on a thread beside the full-text search (recall/gather.py), waited for a core.
`OPENBLAS_THREAD_TIMEOUT=4` (2^4 cycles, OpenBLAS's shortest) lets them sleep
at once instead; the products keep both threads. At 100,000 memories, p50,
alternating in one run: Recall 14.9 / 15.3 ms with one BLAS thread against
12.4 / 13.7 with this, hybrid Search 25.9 / 26.1 against 20.9 / 22.4. Set here,
before numpy loads (manage.py, the WSGI/ASGI entry points and pytest-django
import this package first); an operator's own value is kept.
"""

import os

os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")
