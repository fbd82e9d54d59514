INSERT INTO adk_internal_metadata ("key", value) VALUES (?1, ?2)
ON CONFLICT ("key") DO UPDATE SET value = excluded.value
