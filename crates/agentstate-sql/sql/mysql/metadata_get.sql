SELECT `value` FROM adk_internal_metadata WHERE `key` = ?
