// (filled in by the driver)
