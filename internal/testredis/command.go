package testredis

import (
	"context"
	"net"
	"time"

	"github.com/redis/rueidis"
)

// Do runs one command on this server only (a Cluster's redirections are not followed) as the
// default user, and returns its answer. It is for setting a server up: ACL SETUSER, CLUSTER
// MEET, SENTINEL FAILOVER…
func (s *Server) Do(args ...string) rueidis.RedisResult {
	opt := rueidis.ClientOption{
		InitAddress:       []string{s.Addr},
		Password:          s.Password,
		ForceSingleClient: true,
		DisableCache:      true,
		DisableRetry:      true,
		Dialer:            net.Dialer{Timeout: 5 * time.Second},
	}
	if s.opts.TLS != nil {
		config, err := s.opts.TLS.adminConfig()
		if err != nil {
			return rueidis.NewErrorResult(err)
		}
		opt.TLSConfig = config
	}
	client, err := rueidis.NewClient(opt)
	if err != nil {
		return rueidis.NewErrorResult(err)
	}
	defer client.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return client.Do(ctx, client.B().Arbitrary(args...).Build())
}
