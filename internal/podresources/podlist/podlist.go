package podlist

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
)

// Pod is one pod of a List answer.
type Pod struct {
	Namespace, Name string
	Containers      []Container
}

// Container is one container and the devices kubelet gave it.
type Container struct {
	Name    string
	Devices []Devices
}

// Devices are a container's device IDs of one resource.
type Devices struct {
	Resource string
	IDs      []string
}

// MaxResponse bounds the answer read (a node's pods fit many times over).
const MaxResponse = 16 << 20

// listPath is the gRPC method: /<package>.<service>/<method>.
const listPath = "/v1.PodResourcesLister/List"

// Lister lists kubelet's pods and their devices (PodResources List).
// *Client is the real one; every user of PodResources takes a Lister.
type Lister interface {
	List(ctx context.Context) ([]Pod, error)
}

var _ Lister = (*Client)(nil)

// Client calls List on one socket.
type Client struct {
	socket string
	hc     *http.Client
}

// New returns a client of the PodResources socket (the connection is made
// at the first call).
func New(socket string) *Client {
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", socket)
		},
		MaxResponseHeaderBytes: 1 << 20,
	}
	tr.Protocols = new(http.Protocols)
	tr.Protocols.SetUnencryptedHTTP2(true)
	return &Client{socket: socket, hc: &http.Client{Transport: tr}}
}

// Close releases the client's connections.
func (c *Client) Close() { c.hc.CloseIdleConnections() }

// List returns every pod kubelet lists, with its containers' devices.
func (c *Client) List(ctx context.Context) ([]Pod, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
	}
	// An empty ListPodResourcesRequest: the 5-byte gRPC frame alone.
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://localhost"+listPath, bytes.NewReader(make([]byte, 5)))
	if err != nil {
		return nil, fmt.Errorf("pod resources %s: %w", c.socket, err)
	}
	req.Header.Set("Content-Type", "application/grpc")
	req.Header.Set("TE", "trailers")
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("pod resources %s: %w", c.socket, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxResponse+6))
	if err != nil {
		return nil, fmt.Errorf("pod resources %s: reading the answer: %w", c.socket, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("pod resources %s: HTTP %d", c.socket, resp.StatusCode)
	}
	// grpc-status comes in the trailers, or in the headers of an answer
	// without a body ("trailers-only").
	st := resp.Trailer.Get("Grpc-Status")
	msg := resp.Trailer.Get("Grpc-Message")
	if st == "" {
		st, msg = resp.Header.Get("Grpc-Status"), resp.Header.Get("Grpc-Message")
	}
	if st != "0" {
		code, _ := strconv.Atoi(st)
		return nil, fmt.Errorf("pod resources %s: gRPC status %d: %s", c.socket, code, msg)
	}
	payload, err := unframe(body)
	if err != nil {
		return nil, fmt.Errorf("pod resources %s: %w", c.socket, err)
	}
	pods, err := Decode(payload)
	if err != nil {
		return nil, fmt.Errorf("pod resources %s: %w", c.socket, err)
	}
	return pods, nil
}

// unframe returns the message of a gRPC length-prefixed frame.
func unframe(b []byte) ([]byte, error) {
	if len(b) < 5 {
		return nil, errors.New("answer shorter than a gRPC frame header")
	}
	if b[0] != 0 {
		return nil, errors.New("compressed answer (no compression was offered)")
	}
	n := binary.BigEndian.Uint32(b[1:5])
	if n > MaxResponse || int(n) != len(b)-5 {
		return nil, fmt.Errorf("gRPC frame of %d bytes in %d", n, len(b)-5)
	}
	return b[5:], nil
}

// Decode decodes a ListPodResourcesResponse, keeping pods (field 1):
// name (1), namespace (2), containers (3): name (1), devices (2):
// resource_name (1), device_ids (2). Other fields are skipped.
func Decode(b []byte) ([]Pod, error) {
	var pods []Pod
	err := fields(b, func(num protowire.Number, v []byte) error {
		if num != 1 {
			return nil
		}
		var p Pod
		err := fields(v, func(num protowire.Number, v []byte) error {
			switch num {
			case 1:
				p.Name = string(v)
			case 2:
				p.Namespace = string(v)
			case 3:
				c, err := decodeContainer(v)
				if err != nil {
					return err
				}
				p.Containers = append(p.Containers, c)
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("pod: %w", err)
		}
		pods = append(pods, p)
		return nil
	})
	return pods, err
}

func decodeContainer(b []byte) (Container, error) {
	var c Container
	err := fields(b, func(num protowire.Number, v []byte) error {
		switch num {
		case 1:
			c.Name = string(v)
		case 2:
			var d Devices
			err := fields(v, func(num protowire.Number, v []byte) error {
				switch num {
				case 1:
					d.Resource = string(v)
				case 2:
					d.IDs = append(d.IDs, string(v))
				}
				return nil
			})
			if err != nil {
				return fmt.Errorf("devices: %w", err)
			}
			c.Devices = append(c.Devices, d)
		}
		return nil
	})
	return c, err
}

// fields walks a message, calling f with the bytes of every
// length-delimited field (the only kind read here) and skipping others.
func fields(b []byte, f func(protowire.Number, []byte) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return fmt.Errorf("bad tag: %w", protowire.ParseError(n))
		}
		b = b[n:]
		if typ != protowire.BytesType {
			m := protowire.ConsumeFieldValue(num, typ, b)
			if m < 0 {
				return fmt.Errorf("field %d: %w", num, protowire.ParseError(m))
			}
			b = b[m:]
			continue
		}
		v, m := protowire.ConsumeBytes(b)
		if m < 0 {
			return fmt.Errorf("field %d: %w", num, protowire.ParseError(m))
		}
		if err := f(num, v); err != nil {
			return err
		}
		b = b[m:]
	}
	return nil
}

// Holder is the container a device ID is allocated to.
type Holder struct {
	Namespace, Pod, Container string
}

// Holders maps every device ID of pods (of any resource) to the container
// holding it.
func Holders(pods []Pod) map[string]Holder {
	out := map[string]Holder{}
	for _, p := range pods {
		for _, c := range p.Containers {
			for _, d := range c.Devices {
				for _, id := range d.IDs {
					out[id] = Holder{Namespace: p.Namespace, Pod: p.Name, Container: c.Name}
				}
			}
		}
	}
	return out
}
