//go:build azure

package azure

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/containerinstance/armcontainerinstance/v2"
	"golang.org/x/net/websocket"
)

// Execer runs a command in a container and returns what it printed.
type Execer interface {
	Exec(ctx context.Context, group, container, command string) (string, error)
}

// ACIExec runs commands through ACI's exec API: ARM's ExecuteCommand returns
// a websocket URI and a one-time password; the client connects, sends the
// password as its first message, and reads the command's terminal output
// until the server closes the socket (what `az container exec` does). It
// needs no port on the group.
type ACIExec struct {
	Containers    *armcontainerinstance.ContainersClient
	ResourceGroup string
	// Origin is sent in the websocket handshake; default https://localhost.
	Origin string
}

// ErrExec is wrapped by exec failures.
var ErrExec = errors.New("azure: exec")

// Exec refuses a command with white space before calling ARM: ACI runs the
// command string as one executable name, without a shell, so "/blobleader
// status" would look for a file of that name and fail every time.
func (e *ACIExec) Exec(ctx context.Context, group, container, command string) (string, error) {
	if command == "" || strings.ContainsAny(command, " \t\r\n") {
		return "", fmt.Errorf("%w: %s/%s: command %q: ACI exec runs one executable without arguments; use a one-word entry point such as %s", ErrExec, group, container, command, StatusCommand)
	}
	rows, cols := int32(24), int32(200)
	resp, err := e.Containers.ExecuteCommand(ctx, e.ResourceGroup, group, container, armcontainerinstance.ContainerExecRequest{
		Command:      &command,
		TerminalSize: &armcontainerinstance.ContainerExecRequestTerminalSize{Rows: &rows, Cols: &cols},
	}, nil)
	if err != nil {
		return "", fmt.Errorf("%w: %s/%s %q: %w", ErrExec, group, container, command, err)
	}
	if resp.WebSocketURI == nil || resp.Password == nil {
		return "", fmt.Errorf("%w: %s/%s: ARM returned no websocket URI or password", ErrExec, group, container)
	}
	out, err := readExecSocket(ctx, *resp.WebSocketURI, *resp.Password, e.Origin)
	if err != nil {
		return out, fmt.Errorf("%w: %s/%s %q: %w", ErrExec, group, container, command, err)
	}
	return out, nil
}

// readExecSocket connects to an exec websocket, authenticates with password
// and collects the output until the server closes the socket or ctx ends.
func readExecSocket(ctx context.Context, uri, password, origin string) (string, error) {
	if origin == "" {
		origin = "https://localhost"
	}
	cfg, err := websocket.NewConfig(uri, origin)
	if err != nil {
		return "", err
	}
	ws, err := cfg.DialContext(ctx)
	if err != nil {
		return "", err
	}
	defer ws.Close()
	stop := context.AfterFunc(ctx, func() { ws.Close() })
	defer stop()
	if dl, ok := ctx.Deadline(); ok {
		ws.SetDeadline(dl)
	}
	if err := websocket.Message.Send(ws, password); err != nil {
		return "", fmt.Errorf("send password: %w", err)
	}
	var out strings.Builder
	for {
		var msg []byte
		err := websocket.Message.Receive(ws, &msg)
		out.Write(msg)
		if errors.Is(err, io.EOF) {
			return out.String(), nil
		}
		if err != nil {
			if ctx.Err() != nil {
				return out.String(), ctx.Err()
			}
			return out.String(), err
		}
	}
}

// StatusCommand is what the suite runs through ACI exec to read a worker's
// status: one word, because ACI runs the command string as one executable
// (no arguments, no shell); the image links /status to the binary.
const StatusCommand = "/status"

// execTimeout bounds one status exec (ARM call, websocket, the command).
const execTimeout = 20 * time.Second
