"""What a command prints, one module per format (hyperfine's export/): text.py, json.py, csv.py,
markdown.py. Each exports every command's result it can, to a stream; a command picks its
exporter by --format (cli/options.py: output_format) from the functions it offers.

Above experiments, doctor and studies (a result object of any of them is exported), below cli.
"""
