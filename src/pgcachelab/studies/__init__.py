"""The studies: one package per kind of experiment (a seed article's design), each declaring its
workload, its spec table, its report sections, its advice, the published claims it checks and
the code only its runs need. studies/registry.py lists them by name; a run records its study when
it is created (spec/study.py), and report and advise ask the registry for it."""
