"""SQLite: task records and the key-value store in one file, for one machine."""
