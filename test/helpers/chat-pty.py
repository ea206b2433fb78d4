# Drives `loom chat` through a pseudo-terminal as a person would (test/commands/chat.test.ts):
# a line, Ctrl-C while the reply streams, a typed line cleared by Ctrl-C, then /exit.
# Each step waits for what the terminal shows, not for a fixed time. Prints the transcript
# and the exit status; exits 2 when a step times out.
import os, pty, select, sys, time

argv = sys.argv[1:]
pid, fd = pty.fork()
if pid == 0:
    os.execvp(argv[0], argv)

out = b''

def wait_for(needle, timeout=60):
    global out
    end = time.time() + timeout
    while needle not in out:
        if time.time() > end:
            sys.stdout.write(out.decode(errors='replace'))
            print(f'\nTIMEOUT waiting for {needle!r}')
            sys.exit(2)
        r, _, _ = select.select([fd], [], [], 0.05)
        if r:
            try:
                out += os.read(fd, 4096)
            except OSError:
                break

wait_for(b'>>> ')
os.write(fd, b'Once upon a time\r')
wait_for(b', there')  # the reply has begun
os.write(fd, b'\x03')
wait_for(b'loom: stopped')
wait_for(b'tokens/s')
os.write(fd, b'hello')
wait_for(b'hello')
os.write(fd, b'\x03')  # clears the typed line, does not leave
os.write(fd, b'/exit\r')
wait_for(b'/exit')
_, status = os.waitpid(pid, 0)
try:
    while True:
        r, _, _ = select.select([fd], [], [], 0.1)
        if not r:
            break
        out += os.read(fd, 4096)
except OSError:
    pass
sys.stdout.write(out.decode(errors='replace'))
print(f'\nEXIT {os.waitstatus_to_exitcode(status)}')
