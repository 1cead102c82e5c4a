"""Infrastructure below the course: packaged models, caches, index files and stores, traces."""
