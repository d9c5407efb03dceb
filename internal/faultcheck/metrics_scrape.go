package faultcheck

import (
	"bufio"
	"context"
	"net/http"
	"regexp"
	"strconv"
	"time"
)

// storeErrorLine matches a line of docket_store_errors_total.
var storeErrorLine = regexp.MustCompile(`^docket_store_errors_total\{operation="([a-z_]+)"\} ([0-9.e+]+)$`)

// scrapeStoreErrors adds a server's failed store operations, by operation,
// to into, read from its /metrics: where the faults landed (admit, claim,
// heartbeat, finish, …), since the server's last start.
func scrapeStoreErrors(ctx context.Context, baseURL string, into map[string]int) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, baseURL+"/metrics", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		m := storeErrorLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		if v, err := strconv.ParseFloat(m[2], 64); err == nil && v > 0 {
			into[m[1]] += int(v)
		}
	}
	return sc.Err()
}
