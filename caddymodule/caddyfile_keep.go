package caddymodule

import (
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

// parseKeepResults reads the upload block's keep_results. Syntax:
//
//	keep_results [{
//		prefix          <prefix>
//		public_base_url <url>
//		url_expires     <duration>
//		lease           <duration>
//		attempts        <count>
//		concurrency     <count>
//		max_size        <size>
//		min_rate        <size>
//		max_time        <duration>
//	}]
func parseKeepResults(d *caddyfile.Dispenser) (*KeepResultsConfig, error) {
	k := new(KeepResultsConfig)
	if d.NextArg() {
		return nil, d.ArgErr()
	}
	err := parseBlock(d, map[string]func() error{
		"prefix":          func() error { return stringArg(d, &k.Prefix) },
		"public_base_url": func() error { return stringArg(d, &k.PublicBaseURL) },
		"url_expires":     func() error { return durationArg(d, &k.URLExpires) },
		"lease":           func() error { return durationArg(d, &k.Lease) },
		"attempts":        func() error { return positiveIntArg(d, &k.Attempts) },
		"concurrency":     func() error { return positiveIntArg(d, &k.Concurrency) },
		"max_size":        func() error { return sizeArg(d, &k.MaxSize) },
		"min_rate":        func() error { return sizeArg(d, &k.MinRate) },
		"max_time":        func() error { return durationArg(d, &k.MaxTime) },
	})
	return k, err
}
