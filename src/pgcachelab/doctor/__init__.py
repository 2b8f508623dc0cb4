"""`pgcachelab doctor`: the seeds' tuning knowledge as checks of a host and a server.

Pure checks (`host_checks`, `server_checks`) are kept apart from the code that reads the machine
(`host_facts`) or the server (`server_facts`); doctor only ever reads, it never changes either.
"""
