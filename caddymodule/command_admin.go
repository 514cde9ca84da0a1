package caddymodule

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/caddyserver/caddy/v2"
	caddycmd "github.com/caddyserver/caddy/v2/cmd"
	"github.com/spf13/cobra"

	"github.com/mediagw/mediagw/handlers/keyadmin"
	"github.com/mediagw/mediagw/storage"
)

// adminCall sends one request to the admin API and prints the JSON answer. An error answer is
// returned as the admin API's message with its status, and an admin endpoint that does not
// answer is reported as a gateway that is not running.
func adminCall(cmd *cobra.Command, method, uri string, body any) error {
	return adminCallWith(cmd, method, uri, body, nil)
}

// adminCallWith is adminCall with request headers.
func adminCallWith(cmd *cobra.Command, method, uri string, body any, headers map[string]string) error {
	_, raw, err := adminFetch(cmd, method, uri, body, headers)
	if err != nil {
		return err
	}
	var out bytes.Buffer
	if json.Indent(&out, raw, "", "  ") != nil {
		out.Reset()
		out.Write(raw)
	}
	_, err = fmt.Fprintln(os.Stdout, strings.TrimSpace(out.String()))
	return err
}

// adminFetch sends one request to the admin API and returns the answer of a success; an error
// answer is returned as the admin API's message with its status.
func adminFetch(cmd *cobra.Command, method, uri string, body any, headers map[string]string) (http.Header, []byte, error) {
	addr, _ := cmd.Flags().GetString("address")
	cfg, _ := cmd.Flags().GetString("config")
	adapter, _ := cmd.Flags().GetString("adapter")
	adminAddr, err := caddycmd.DetermineAdminAPIAddress(addr, nil, cfg, adapter)
	if err != nil {
		return nil, nil, fmt.Errorf("finding the admin endpoint: %v", err)
	}
	var payload []byte
	if body != nil {
		if payload, err = json.Marshal(body); err != nil {
			return nil, nil, err
		}
	}
	status, header, raw, err := adminRequest(adminAddr, method, uri, payload, headers)
	if err != nil {
		return nil, nil, err
	}
	if status >= 400 {
		var e struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(raw, &e) != nil || e.Error == "" {
			e.Error = strings.TrimSpace(string(raw))
		}
		return nil, nil, fmt.Errorf("%s (HTTP %d from the admin endpoint %s)", e.Error, status, adminAddr)
	}
	return header, raw, nil
}

// adminRequest sends one request to Caddy's admin endpoint (TCP or unix socket) and reads the
// answer, at most 4 MiB of it.
func adminRequest(adminAddr, method, uri string, payload []byte, headers map[string]string) (int, http.Header, []byte, error) {
	na, err := caddy.ParseNetworkAddress(adminAddr)
	if err != nil || na.PortRangeSize() > 1 {
		return 0, nil, nil, fmt.Errorf("invalid admin address %s: %v", adminAddr, err)
	}
	origin, dialAddr := "http://"+na.JoinHostPort(0), na.JoinHostPort(0)
	if na.IsUnixNetwork() {
		// The socket path may carry permission bits (path|0220); the request needs some host.
		origin, dialAddr = "http://127.0.0.1", strings.Split(na.Host, "|")[0]
	}
	req, err := http.NewRequest(method, origin+uri, bytes.NewReader(payload))
	if err != nil {
		return 0, nil, nil, err
	}
	if !na.IsUnixNetwork() {
		req.Header.Set("Origin", origin) // the admin endpoint checks it
	}
	if payload != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for name, value := range headers {
		req.Header.Set(name, value)
	}
	client := &http.Client{
		Timeout: 30 * time.Second,
		Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, na.Network, dialAddr)
		}},
	}
	resp, err := client.Do(req)
	if err != nil {
		if errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, os.ErrNotExist) {
			return 0, nil, nil, fmt.Errorf("is the gateway running? (admin endpoint %s: nothing answers there; "+
				"start it with `caddy run`, or give its admin address with --address or --config)", adminAddr)
		}
		return 0, nil, nil, fmt.Errorf("calling the admin endpoint %s: %v", adminAddr, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return 0, nil, nil, fmt.Errorf("reading the admin endpoint's answer: %v", err)
	}
	return resp.StatusCode, resp.Header, raw, nil
}

// printList reads every page of a key or account list (path, with the query of the first page
// in first) and prints the items as one JSON array.
func printList(cmd *cobra.Command, path string, first url.Values) error {
	items := []json.RawMessage{}
	q := first
	q.Set("limit", strconv.Itoa(storage.MaxDirectoryPage))
	for {
		header, raw, err := adminFetch(cmd, http.MethodGet, path+"?"+q.Encode(), nil, nil)
		if err != nil {
			return err
		}
		var page []json.RawMessage
		if err := json.Unmarshal(raw, &page); err != nil {
			return fmt.Errorf("reading the admin endpoint's list: %v", err)
		}
		items = append(items, page...)
		next := header.Get(keyadmin.ListNextHeader)
		if next == "" {
			break
		}
		q.Set("after", next)
	}
	out, err := json.MarshalIndent(items, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(os.Stdout, string(out))
	return err
}
