"""The oarbank SDK for Python: service_protocol is the one part there is."""
