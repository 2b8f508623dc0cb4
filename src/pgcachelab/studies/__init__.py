"""The studies: one package per kind of experiment (a seed article's design), each declaring its
workload, its spec table, how to recognise its runs, its report sections, its advice and the
published claims it checks. studies/registry.py lists them; runner, report and advise iterate
that list and name no study themselves."""
