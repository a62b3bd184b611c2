import json, datetime
T={'pref':'preferencia','data':'data_comemorativa','vin':'vinculo_social','pad':'padrao_comportamental','rec':'reclamacao','fb':'feedback_positivo','res':'restricao','com':'vinculo_comercial','ctx':'contexto_pessoal'}
UNITS={'pad','rec','fb'}
INB={301:3001,302:3002,303:3003}
C=[]
exec(open(__file__.replace('_gen_conv.py','_extra.txt'),encoding='utf-8').read())
def conv(cid,acc,contact,unit,day,msgs,facts):
    if cid in EXTRA:
        m,f=EXTRA[cid]; msgs=msgs+[('C',m)]; facts=facts+f
    t=datetime.datetime(2026,11,day,9+(len(C)%11),len(C)%50)
    ms=[]
    for i,m in enumerate(msgs):
        role='contact' if m[0]=='C' else 'agent'
        d={'role':role,'text':m[1],'sent_at':(t+datetime.timedelta(minutes=2*i)).strftime('%Y-%m-%dT%H:%M:%SZ')}
        if len(m)>2: d['instruction']=True
        ms.append(d)
    ctexts=[m[1] for m in msgs if m[0]=='C']
    gf=[]
    for ty,content,ev in facts:
        assert any(ev in x for x in ctexts),(cid,ev)
        gf.append({'memory_type':T[ty],'content':content,'evidence':ev,'scope':'unit' if T[ty] in {'padrao_comportamental','reclamacao','feedback_positivo'} else 'global'})
    C.append({'conversation_id':cid,'account_id':acc,'contact_id':contact,'unit_id':unit,'inbox_id':INB.get(acc,acc*10),'channel':'whatsapp','messages':ms,'gold_facts':gf})
exec(open(__file__.replace('_gen_conv.py','_convs.txt'),encoding='utf-8').read())
with open(__file__.replace('_gen_conv.py','conversations.jsonl'),'w',encoding='utf-8') as f:
    for c in C: f.write(json.dumps(c,ensure_ascii=False)+'\n')
print(len(C),sum(len(c['gold_facts']) for c in C))
