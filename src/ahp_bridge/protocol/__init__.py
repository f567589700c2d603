"""AHP 0.7.0 wire layer (sans-IO).

Modules: ``models`` (every wire type: generated + fixes), ``actions`` (``StateAction``,
``parse_action``, dispatch tables), ``params`` (request/notification params),
``notifications`` (server notifications missing from the schema), ``versions``
(negotiation), ``uris`` (channel URIs), ``base`` (``WireModel``, ``wire_dump``).
Nothing is imported here eagerly: the generated models take ~0.3 s to import.
"""
