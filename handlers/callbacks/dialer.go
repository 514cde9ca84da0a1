package callbacks

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"syscall"
	"time"

	"github.com/mediagw/mediagw/handlers/publicnet"
)

// ErrNotPublic is returned when a callback URL resolves to an address that is not public.
type ErrNotPublic struct{ Addr string }

func (e ErrNotPublic) Error() string {
	return fmt.Sprintf("callback address %s is not public", e.Addr)
}

// Dialer dials TCP for callbacks. Unless AllowPrivate is set, it refuses any address that is not
// public. The check runs on the address actually being connected to, after name resolution, so a
// name that resolves (or re-resolves) to a private address is refused too.
func Dialer(allowPrivate bool) func(ctx context.Context, network, addr string) (net.Conn, error) {
	d := &net.Dialer{Timeout: 5 * time.Second}
	if !allowPrivate {
		d.Control = func(_, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil || !publicnet.IsPublic(ap.Addr()) {
				return ErrNotPublic{Addr: address}
			}
			return nil
		}
	}
	return d.DialContext
}
