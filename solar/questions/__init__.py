"""Questions asked on top of the bound: one program on several GPUs (:mod:`.compare`), the
hardware a target time needs (:mod:`.provision`), latency per problem size (:mod:`.sweep`), the
serving frontier of a language model (:mod:`.serving`), and many problem files at once
(:mod:`.batch`, on the executors of :mod:`.executors`).

Layer: above the analysis API (:mod:`solar.api`), which is all they use to trace and bound;
below the device-side modules, the views and the CLI, none of which they import. Their results
are plain dataclasses whose text, HTML, DataFrames and plots live in :mod:`solar.report`.
"""
