"""Golden review: candidates → people's decisions → the next golden version.

Takes: ``candidates`` rows (from ``growth``) and audited passes of a run. Gives: accepted,
edited or rejected candidates (in the terminal, or pulled back from a Phoenix dataset), the next
golden file with a changelog entry, and negative labels.

Modules: ``suggest`` (the chunks a reviewer is offered), ``audit`` (passing traces routed to a
person), ``review`` (the terminal review), ``phoenix`` (push to and pull from a Phoenix dataset)
and ``promote`` (accepted candidates → the next version).
"""
