-- gpuplan default catalog: provenance (catalog_info, schema 002).
INSERT INTO catalog_info(key,value) VALUES ('data_version','2026-11-29'),('sources','shared/reference gpus.csv, vms.csv, formulas.md; see each row''s source column');
