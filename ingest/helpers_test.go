package ingest

import "time"

var fixedTime = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
