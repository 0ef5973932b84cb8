"""The OceanBase (MySQL mode) / seekdb Memory backend over mysqlclient (Memory RFC,
"OceanBase adapter"). mysqlclient is imported only when a backend connects."""

from powercontext.adapters.oceanbase.backend import OceanBaseMemoryBackend, parse_url

__all__ = ["OceanBaseMemoryBackend", "parse_url"]
