"""Small shared I/O pieces used above the pure core: manifest reading, the backend registry.

Nothing here decides anything about garbage collection; the controller, the
testing helpers and the CLI share these so that each exists once.
"""
