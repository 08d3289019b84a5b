#!/usr/bin/env bash
# Makes the certificates skiff's TLS tests and etc/secure-cluster.conf use:
#   gen-certs.sh DIR
# into DIR (PEM files, created if missing):
#   ca.crt ca.key                 the cluster CA (trust store: ca.crt)
#   node-1..3.crt/.key/.pem       node certificates (CN=node-N,O=skiff; SAN
#                                 127.0.0.1, localhost); .pem = key store
#                                 (certificate chain + private key)
#   client.crt/.key/.pem          a client (CN=client,O=skiff)
#   admin.crt/.key/.pem           an admin client (CN=admin,O=skiff)
#   node-1-enc.key/.pem           node-1's key encrypted (AES-256) with the
#                                 password in key-password.txt (ssl.key.password)
#   expired.crt/.key/.pem         signed by the CA, validity over in the past
#   rogue-ca.crt rogue-ca.key     a second CA nobody trusts, and
#   rogue.crt/.key/.pem           a certificate it signed (CN=rogue,O=skiff)
# Keys are EC P-256 (fast to make and to handshake). Needs the openssl CLI.
set -euo pipefail
dir=${1:?usage: gen-certs.sh DIR}
mkdir -p "$dir"
cd "$dir"
days=3650
pw=skiff-key-pass
export LC_ALL=C

key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }

ca() { # name subject
    key "$1.key"
    openssl req -x509 -new -key "$1.key" -sha256 -days "$days" -subj "$2" -out "$1.crt" \
        -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
}

# cert name subject ca [extra openssl x509 args...]
cert() {
    local name=$1 subj=$2 signer=$3
    shift 3
    key "$name.key"
    openssl req -new -key "$name.key" -subj "$subj" -out "$name.csr" 2>/dev/null
    printf '%s\n' "basicConstraints=CA:FALSE" "keyUsage=critical,digitalSignature,keyEncipherment" \
        "extendedKeyUsage=serverAuth,clientAuth" "subjectAltName=IP:127.0.0.1,DNS:localhost" > "$name.ext"
    openssl x509 -req -in "$name.csr" -CA "$signer.crt" -CAkey "$signer.key" -set_serial "0x$(openssl rand -hex 8)" \
        -sha256 -extfile "$name.ext" -out "$name.crt" "$@" 2>/dev/null
    cat "$name.crt" "$name.key" > "$name.pem"
    rm -f "$name.csr" "$name.ext"
}

ca ca "/CN=skiff-test-ca/O=skiff"
ca rogue-ca "/CN=rogue-ca/O=rogue"
for i in 1 2 3; do cert "node-$i" "/CN=node-$i/O=skiff" ca -days "$days"; done
cert client "/CN=client/O=skiff" ca -days "$days"
cert admin "/CN=admin/O=skiff" ca -days "$days"
cert rogue "/CN=rogue/O=skiff" rogue-ca -days "$days"
# expired: valid 2020-01-01 .. 2020-01-02. `openssl x509` sets a start date
# only from 3.4 on (-not_before); older ones backdate through `openssl ca`,
# which needs a small database.
key expired.key
openssl req -new -key expired.key -subj "/CN=expired/O=skiff" -out expired.csr 2>/dev/null
if openssl x509 -help 2>&1 | grep -q -- '-not_before'; then
    openssl x509 -req -in expired.csr -CA ca.crt -CAkey ca.key -set_serial 0x0e -sha256 \
        -not_before 20200101000000Z -not_after 20200102000000Z -out expired.crt 2>/dev/null
else
    # openssl ca can backdate with -startdate/-enddate; it wants a tiny database
    mkdir -p ca-db
    : > ca-db/index.txt
    printf '0E\n' > ca-db/serial
    cat > ca-db/ca.cnf <<CNF
[ ca ]
default_ca = d
[ d ]
database = ca-db/index.txt
serial = ca-db/serial
new_certs_dir = ca-db
default_md = sha256
policy = p
copy_extensions = none
[ p ]
commonName = supplied
organizationName = optional
CNF
    openssl ca -batch -config ca-db/ca.cnf -cert ca.crt -keyfile ca.key -in expired.csr -out expired.crt \
        -startdate 20200101000000Z -enddate 20200102000000Z -notext >/dev/null 2>&1
    rm -rf ca-db
fi
rm -f expired.csr
cat expired.crt expired.key > expired.pem
# node-1's key encrypted for ssl.key.password
openssl pkey -in node-1.key -aes256 -passout "pass:$pw" -out node-1-enc.key
cat node-1.crt node-1-enc.key > node-1-enc.pem
printf '%s\n' "$pw" > key-password.txt
chmod 600 ./*.key ./*.pem
echo "gen-certs: certificates in $PWD"
