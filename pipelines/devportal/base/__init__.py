"""What every layer shares: errors, the API's names, coercions, safe text, progress.

Nothing here imports another layer of devportal.

One job per module, imports running one way (each only from those above it):

    errors     the error kinds and their exit codes, one-line causes, the scrub every shown or
               stored text passes
    coercion   small value coercions: `to_int` (numbers sent as numbers or strings)
    api        the API's paths, resources, statuses and timestamp format (the client, the
               sandbox and the tests' servers read them here)
    safe_text  API text made safe for each format (CSV, Markdown, terminal, chart labels)
    progress   what a run shows while it works: nothing, `progress:` lines, or a rich bar on
               stderr
"""
