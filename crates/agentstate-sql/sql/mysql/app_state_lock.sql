SELECT state FROM app_states WHERE app_name = ? FOR UPDATE
