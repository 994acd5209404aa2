"""Wire: what arrives over the network, decoded into records, and what is sent back.

Takes request bytes with their Content-Type and Content-Encoding: OTLP trace and logs requests
(protobuf or JSON, gzip or deflate) and ``/v1/feedback`` JSON bodies. Gives ``SpanRecord``s or
ready store rows, ``LogEvent``s, ``Feedback``, and the OTLP responses and error bodies. Bad
bodies raise ``BadPayload`` (400), ``UnsupportedMediaType`` (415) or ``PayloadTooLarge`` (413);
single invalid spans are counted as rejected (OTLP partial success). The lowest layer of the
collector: imports no other stage.

Modules: ``spans`` (``SpanRecord``, ``LogEvent``, ``SpanRow``: a decoded span with nothing
dropped, the row the span store keeps), ``codec`` (media types, bounded decompression, parsing,
attribute values, responses), ``traces`` (trace requests to records or store rows),
``logs`` (the ``gen_ai.*`` content events of a logs request), ``feedback`` (the feedback body
accepted, and stored rows read back defensively).
"""
