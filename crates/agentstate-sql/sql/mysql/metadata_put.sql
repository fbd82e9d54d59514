INSERT INTO adk_internal_metadata (`key`, `value`) VALUES (?, ?)
ON DUPLICATE KEY UPDATE `value` = VALUES(`value`)
