"""Read-only queries behind the pages: each returns plain JSON-able data for a page and its twin."""
