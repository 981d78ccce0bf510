package dashboard

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
)

// Origin is an address's origin as a browser names it, in one spelling:
// scheme://host:port, lower case, the scheme's port written out. ok is
// false for an address that is not http or https or names no host.
func Origin(addr string) (origin string, ok bool) {
	u, err := url.Parse(addr)
	if err != nil || u.Host == "" || u.User != nil {
		return "", false
	}
	scheme := strings.ToLower(u.Scheme)
	port := u.Port()
	switch {
	case scheme != "http" && scheme != "https":
		return "", false
	case port == "" && scheme == "http":
		port = "80"
	case port == "":
		port = "443"
	}
	host := strings.ToLower(u.Hostname())
	if host == "" {
		return "", false
	}
	return scheme + "://" + net.JoinHostPort(host, port), true
}

// PublicURL checks a server's public address (`sortie server --url`): an
// http or https address with a host, and no path, query or fragment.
func PublicURL(addr string) error {
	u, err := url.Parse(addr)
	if _, ok := Origin(addr); err != nil || !ok || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("%q: give the address users reach the server at, scheme, host and port, e.g. https://sortie.example.com:8443", addr)
	}
	return nil
}

// Origins are the origins a dashboard served on the listener addr
// (scheme http, or https with TLS) is reached at: the public address
// alone when one is given; else the listener's own, where an address of
// loopback is also localhost, and a listener on every address (0.0.0.0,
// [::]) is reached at each address of this machine and at its name.
func Origins(public string, addr net.Addr, useTLS bool) ([]string, error) {
	if public != "" {
		o, ok := Origin(public)
		if !ok {
			return nil, PublicURL(public)
		}
		return []string{o}, nil
	}
	scheme := "http"
	if useTLS {
		scheme = "https"
	}
	host, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return nil, err
	}
	var hosts []string
	ip := net.ParseIP(host)
	switch {
	case ip == nil:
		hosts = []string{host}
	case ip.IsUnspecified():
		hosts = append(hosts, "localhost")
		if name, err := os.Hostname(); err == nil && name != "" {
			hosts = append(hosts, name)
		}
		if as, err := net.InterfaceAddrs(); err == nil {
			for _, a := range as {
				if n, ok := a.(*net.IPNet); ok {
					hosts = append(hosts, n.IP.String())
				}
			}
		}
	case ip.IsLoopback():
		hosts = []string{ip.String(), "localhost"}
	default:
		hosts = []string{ip.String()}
	}
	var out []string
	seen := map[string]bool{}
	for _, h := range hosts {
		if o, ok := Origin(scheme + "://" + net.JoinHostPort(h, port)); ok && !seen[o] {
			seen[o] = true
			out = append(out, o)
		}
	}
	return out, nil
}
