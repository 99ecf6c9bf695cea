"""Django's SQLite backend, reading stored moments straight into aware UTC datetimes.

Django registers `parse_datetime` as sqlite3's converter for "datetime"
columns: each moment comes back naive, and the ORM (or `console.prepared`)
then gives it its zone with `replace(tzinfo=UTC)`. On this project's
machines that pair took about 3 us per value, and a Recall reads about 500
moments (hydration, the session channel): 1.7 ms of a 33 ms Recall on LoCoMo.
`base` registers one converter that parses the stored text with its zone in
one `datetime.fromisoformat` (0.3 us). The ORM's own conversion leaves an
aware value as it is, so every reader gets what it got before.

The stored text is UTC, as Django writes it with `USE_TZ` and no
`DATABASES[...]["TIME_ZONE"]`; `base.DatabaseWrapper` refuses any other
setting. `console.database_url.SQLITE_ENGINE` selects this backend.
"""
