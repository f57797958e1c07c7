import json, sys, subprocess, os, tempfile, collections
from concurrent.futures import ThreadPoolExecutor
ref = json.load(open(sys.argv[1]))['functions']
binary = sys.argv[2]
lang = sys.argv[3] if len(sys.argv) > 3 else 'python'
ext = '.py' if lang == 'python' else '.java'
tmp = tempfile.mkdtemp()
def run(k):
    x = ref[k]
    p = os.path.join(tmp, f'f{k}{ext}')
    open(p, 'w').write(x['text'])
    r = subprocess.run([binary, 'syntax', '--json', p], capture_output=True, text=True)
    if r.returncode != 0:
        return k, None, r.stderr
    return k, json.loads(r.stdout), None
with ThreadPoolExecutor(2) as ex:
    res = list(ex.map(run, range(len(ref))))
tot = collections.Counter()
worst = []
tokmis = 0; skipped = 0
for k, out, err in res:
    x = ref[k]
    if x['errors']:
        skipped += 1; continue
    if out is None:
        print('FAIL', x['id'], err); continue
    toks = [[t['start'], t['end']] for t in out['tokens']]
    if toks != [x['tokens'][i:i + 2] for i in range(0, len(x['tokens']), 2)]:
        tokmis += 1
        if tokmis <= 5: print('TOKENS differ', x['id'])
        continue
    for g in (['ast_motif', 'dfg'] if lang == 'python' else ['dfg']):
        if g == 'ast_motif':
            R = {(i, j) for i, js in x['ast_motif'] for j in js}
            C = {tuple(e) for e in out['graphs']['ast_motif']}
        else:
            R = {(e[0], e[1]) for e in x['dfg']}
            C = {(e[0], e[1]) for e in out['graphs']['dfg']}
            RK = {(e[0], e[1], k) for e in x['dfg'] for k in e[2].split('/')}
            CK = {(e[0], e[1], e[2]) for e in out['graphs']['dfg']}
            tot[g + '_kind_inter'] += len(RK & CK); tot[g + '_kind_union'] += len(RK | CK)
        tot[g + '_inter'] += len(R & C); tot[g + '_union'] += len(R | C)
        tot[g + '_ref'] += len(R); tot[g + '_cs'] += len(C)
        if R != C:
            worst.append((len(R ^ C), g, x['id'], k, sorted(R - C)[:6], sorted(C - R)[:6]))
print('functions', len(ref), 'skipped (study errors)', skipped, 'token mismatches', tokmis)
for g in (['ast_motif', 'dfg'] if lang == 'python' else ['dfg']):
    print(g, 'jaccard %.4f' % (tot[g+'_inter'] / max(1, tot[g+'_union'])), 'ref', tot[g+'_ref'], 'codescope', tot[g+'_cs'])
print('dfg with kinds jaccard %.4f' % (tot['dfg_kind_inter'] / max(1, tot['dfg_kind_union'])))
worst.sort(reverse=True)
print('functions differing', len(worst))
for w in worst[:int(os.environ.get('SHOW', 12))]:
    x = ref[w[3]]
    print('---', w[0], w[1], w[2], 'missing', w[4], 'extra', w[5])
json.dump([(w[3], w[1]) for w in worst], open('/tmp/cmp/worst.json', 'w'))
