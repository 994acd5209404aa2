-- Phoenix keeps its own database on the same server (ragsieve uses the `ragsieve` database).
CREATE DATABASE phoenix OWNER ragsieve;
