"""Secrets and hosts: what never reaches a log, a report or an answer.

- `redact`: credentials taken out of any text written (query values, auth schemes);
- `jdbc_urls`: JDBC and service URLs fit to print;
- `hosts`: which Host names `serve` and `docs serve` answer (the DNS-rebinding rule).
"""
