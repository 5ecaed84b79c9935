"""The pure core: data in, plans out; no I/O, no clock, no tasks.

``refs``/``types`` are the value types, ``graph`` the owner/dependent graph,
``graph_builder`` the event rules that maintain it, ``decisions`` what a worker
does with a node, ``patches`` the patch bodies, ``dump`` the DOT debug graph and
``preview`` the cascade report. The public names are re-exported by
:mod:`ownergc`; the rest of the package imports them from there.
"""
