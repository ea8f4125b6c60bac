"""A new user's first minutes: `devportal init`, the demo, and the files they write.

One job per module, imports running one way (each only from those above it):

    init  `devportal init [DIR]`: `.dlt/config.toml`, `.dlt/secrets.toml`, notebooks; never
          overwriting
    demo  the demo's story: the sandbox clock's start, the example app's releases, a throwaway
          PostgreSQL
"""
