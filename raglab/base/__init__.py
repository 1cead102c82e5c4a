"""The lowest base: settings, atomic files, records, text helpers, progress bars."""
