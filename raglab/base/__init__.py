"""The lowest base, which every room may import: settings (``config``, the one place the environment is read),
atomic files and locks (``files``), records (``records``), text helpers (``text``), progress bars (``progress``)."""
