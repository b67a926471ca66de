"""What every room stands on; imports nothing else of mirrorspec.

- `errors`: the error tree (a message, a location and a hint; exit code 1);
- `console`: all user-facing output, text for people and JSON lines for machines;
- `files`: path rules and file systems below the JVM line (local, s3, abfss);
- `logfile`: the run's log file, where tracebacks go; files only their owner reads;
- `json_text`: the one JSON printer of every file written;
- `deadline_http`: an HTTP request bounded in total time, no redirect followed;
- `faults`: named fault points for the crash and concurrency tests;
- `interrupts`: Ctrl-C (the CLI's SIGINT handler, silenced output, the exit at once);
- `suggest`: the one did-you-mean helper;
- `origin`: where a setting came from, for messages;
- `delimited_text`: where a CSV record is (its line) and the words for a cell not of its type.
"""
