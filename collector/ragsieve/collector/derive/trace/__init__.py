"""Reading a trace: span roles, the trace tree, pipeline scope, attribute and message readers.

Takes ``SpanRecord``s and ``LogEvent``s; gives typed reads of their attributes (``attrs``), span
roles and the deduplicated tree with its local root and LLM leaves (``classify``, SPAN_SPEC §3.3),
the main RAG pipeline's spans (``scope``), GenAI messages of every convention era (``genai``) and
framework task input and output as OpenLLMetry and Langfuse record them (``taskio``). Pure: no
store, no I/O; imports only ``wire.spans`` from the collector.
"""
