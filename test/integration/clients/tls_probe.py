#!/usr/bin/env python3
"""Raw TLS probes of a skiff listener (t_tls_*.sh).

  tls_probe.py plain HOST PORT        ApiVersions in plaintext to a TLS port:
                                      PASS when the node closes without a
                                      Kafka answer
  tls_probe.py halfhello HOST PORT    half a ClientHello, then silence: PASS
                                      when the node closes it (prints seconds)
  tls_probe.py serial HOST PORT CA    prints the served certificate's serial
  tls_probe.py apiversions HOST PORT CA [CERT KEY]
                                      ApiVersions over TLS: PASS with an answer
  tls_probe.py vote HOST PORT CA CLUSTER_ID CANDIDATE [CERT KEY]
                                      a forged raft Vote (candidate id, epoch
                                      INT32_MAX) over TLS: PASS when it is
                                      refused (handshake or no vote granted)
"""
import socket
import ssl
import struct
import sys
import time


def api_versions_frame():
    body = struct.pack(">hhih", 18, 0, 7, 4) + b"test"  # key, version, corr, client id
    return struct.pack(">i", len(body)) + body


def closes(s, limit):
    s.settimeout(limit)
    try:
        data = s.recv(4096)
    except socket.timeout:
        return None
    except OSError:
        return b""
    return data


def main():
    mode, host, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
    if mode == "plain":
        s = socket.create_connection((host, port))
        s.sendall(api_versions_frame())
        data = closes(s, 10)
        ok = data is not None and len(data) < 8  # closed (maybe a TLS alert), no Kafka answer
        print(("PASS" if ok else "FAIL") + " plaintext ApiVersions on a TLS port is closed (got %r)" % (data[:16] if data else data))
    elif mode == "halfhello":
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        inc, out = ssl.MemoryBIO(), ssl.MemoryBIO()
        obj = ctx.wrap_bio(inc, out, server_side=False)
        try:
            obj.do_handshake()
        except ssl.SSLWantReadError:
            pass
        hello = out.read()
        s = socket.create_connection((host, port))
        s.sendall(hello[: len(hello) // 2])
        t0 = time.time()
        data = closes(s, 30)
        took = time.time() - t0
        ok = data is not None and data == b""
        print(("PASS" if ok else "FAIL") + " half a ClientHello is closed by the node after %.1f s" % took)
    elif mode == "serial":
        ctx = ssl.create_default_context(cafile=sys.argv[4])
        ctx.check_hostname = False
        with socket.create_connection((host, port)) as raw, ctx.wrap_socket(raw) as s:
            der = s.getpeercert(binary_form=True)
        # the serial, without a parser: let ssl decode it
        import tempfile, subprocess
        pem = ssl.DER_cert_to_PEM_cert(der)
        out = subprocess.run(["openssl", "x509", "-noout", "-serial"], input=pem.encode(), capture_output=True)
        print(out.stdout.decode().strip().split("=", 1)[-1])
    elif mode == "apiversions":
        ctx = ssl.create_default_context(cafile=sys.argv[4])
        ctx.check_hostname = False
        if len(sys.argv) > 6:
            ctx.load_cert_chain(sys.argv[5], sys.argv[6])
        try:
            with socket.create_connection((host, port), timeout=10) as raw, ctx.wrap_socket(raw) as s:
                s.sendall(api_versions_frame())
                data = s.recv(4)
                ok = len(data) == 4
        except (OSError, ssl.SSLError) as e:
            ok = False
            data = repr(e)
        print(("PASS" if ok else "FAIL") + " ApiVersions over TLS answered (%r)" % (data,))
    elif mode == "vote":
        import os
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        from forged_raft import frame, INT32_MAX, TOPIC
        from kwire import cstr, uvarint
        ca, cluster, cand = sys.argv[4], sys.argv[5], int(sys.argv[6])
        ctx = ssl.create_default_context(cafile=ca)
        ctx.check_hostname = False
        if len(sys.argv) > 8:
            ctx.load_cert_chain(sys.argv[7], sys.argv[8])
        part = struct.pack(">iiiiq", 0, INT32_MAX, cand, INT32_MAX, 1 << 40)
        body = cstr(cluster.encode()) + uvarint(2) + cstr(TOPIC) + uvarint(2) + part + b"\x00" + b"\x00" + b"\x00"
        how = "no answer"
        try:
            with socket.create_connection((host, port), timeout=10) as raw, ctx.wrap_socket(raw) as s:
                s.sendall(frame(52, 0, b"attacker", body, True))
                data = s.recv(4096)
                how = "answered %d bytes" % len(data) if data else "closed after the handshake"
                refused = not data  # granting or not, an answer means the Vote reached raft
        except (OSError, ssl.SSLError) as e:
            refused = True
            how = "refused at the handshake: %s" % e.__class__.__name__
        print(("PASS" if refused else "FAIL") + " forged Vote over TLS refused (%s)" % how)
    else:
        sys.exit("unknown mode " + mode)


if __name__ == "__main__":
    main()
