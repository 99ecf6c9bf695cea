"""The recall engine: plain Python, never imports django, ninja or console."""
