"""SQLite: task records in one file, for one machine."""
