// s3rver for the tests: on 127.0.0.1 only, accepting the access keys the tests sign with.
// Usage: node serve.js DIRECTORY PORT, with S3RVER_KEYS="key:secret,key:secret" in the environment.
// s3rver knows one access key (S3RVER) and checks no SigV4 signature; it refuses unknown key ids.
'use strict';

const S3rver = require('s3rver');
const AWSAccount = require('s3rver/lib/models/account');

const [directory, port] = process.argv.slice(2);
for (const pair of (process.env.S3RVER_KEYS || '').split(',').filter(Boolean)) {
  const [key, secret] = pair.split(':');
  AWSAccount.DUMMY_ACCOUNT.createKeyPair(key, secret);
}

new S3rver({ address: '127.0.0.1', port: Number(port), directory, silent: false, vhostBuckets: false })
  .run()
  .then(({ address, port: bound }) => console.log(`s3rver listening on ${address}:${bound}`))
  .catch(error => {
    console.error(error);
    process.exit(1);
  });
